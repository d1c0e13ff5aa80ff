"""Domains: what a failure, a retrieval query, a rendering and a finished episode mean for one kind
of task, behind one protocol (``base.Domain``). ``Memory`` dispatches to them and knows none.

- ``sql``: Text-to-SQL repair (MERIT): ``SqlFailure``, ``SqlDomain(render=...)``, MERIT's retrieval rows;
- ``terminal``: failed shell and coding steps: ``TerminalFailure``, ``TerminalDomain``.
"""

from ..retrieval.hybrid import RetrievalConfig, RetrievalQuery   # the protocol's value types
from .base import Confirm, Diagnosis, Domain, Shown, Situation, domain_for, domain_of_kind
from .sql import RETRIEVAL_METHODS, SqlDomain, SqlFailure, copies_foreign_names, retrieval_config, schema_check
from .sql import SQL_EVIDENCE, SqlEvidence, sql_diagnosis
from .terminal import (TERMINAL_EVIDENCE, TERMINAL_RETRIEVAL, TerminalDomain, TerminalEvidence, TerminalFailure,
                       terminal_memory_fields, terminal_profile)

DEFAULT_DOMAINS: tuple[Domain, ...] = (TerminalDomain(), SqlDomain())   # the first: what a request that names no kind is

__all__ = ["Confirm", "DEFAULT_DOMAINS", "Diagnosis", "Domain", "RETRIEVAL_METHODS", "RetrievalConfig", "RetrievalQuery",
           "SQL_EVIDENCE", "Shown", "Situation", "SqlDomain", "SqlEvidence", "SqlFailure", "TERMINAL_EVIDENCE",
           "TERMINAL_RETRIEVAL", "TerminalDomain", "TerminalEvidence", "TerminalFailure",
           "copies_foreign_names", "domain_for", "domain_of_kind", "retrieval_config", "schema_check", "sql_diagnosis",
           "terminal_memory_fields", "terminal_profile"]
