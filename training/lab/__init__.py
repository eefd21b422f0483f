"""The research workflow (campaigns, ablations, curves, budgets); the library never imports it."""
