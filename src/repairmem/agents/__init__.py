"""Agents: the SQL repair loop (MERIT and its baselines) and, later, the terminal agent."""
