import sys

from oneply.engine.cli import main

sys.exit(main())
