"""oneply's test suite: one folder per package (engine, bot, training, arena), shared
fixtures in conftest.py and support code in tests/helpers/."""
