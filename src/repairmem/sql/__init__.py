"""Text-to-SQL: read-only execution, observable evidence, prompt templates and their audit,
Spider/BIRD loaders and execution-match scoring.

Everything here is specific to SQL repair; the memory, retrieval and gate layers do not depend on it.
"""
