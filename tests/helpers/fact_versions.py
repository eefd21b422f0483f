"""The fact sets of the bundled models that came before the adopted one, for the tests that
grow a model from an older set or check that a model without a group is spared its work.

Each version added groups to the one before (docs/studies/README.md says which study adopted
each); the engine itself knows only the groups (engine/facts/features.py ``GROUPS``) and the set
every preset reads (``ADOPTED_GROUPS``).
"""

from __future__ import annotations

from oneply.engine.facts.features import BASE_GROUPS, group_facts

#: v5 – v7: the base groups
V5_GROUPS: tuple[str, ...] = BASE_GROUPS
V5_FACTS: tuple[str, ...] = group_facts(V5_GROUPS)
#: v8 added the static exchange
V8_GROUPS: tuple[str, ...] = (*V5_GROUPS, "exchange")
V8_FACTS: tuple[str, ...] = group_facts(V8_GROUPS)
#: v9 added the threats
V9_GROUPS: tuple[str, ...] = (*V8_GROUPS, "threats")
V9_FACTS: tuple[str, ...] = group_facts(V9_GROUPS)
#: v10 – v12 added the checks
V12_GROUPS: tuple[str, ...] = (*V9_GROUPS, "checks")
V12_FACTS: tuple[str, ...] = group_facts(V12_GROUPS)
#: v13 added the forks
V13_GROUPS: tuple[str, ...] = (*V12_GROUPS, "forks")
V13_FACTS: tuple[str, ...] = group_facts(V13_GROUPS)
#: v14 added the replies (v15, the adopted set, then mate threats, mobility, kings, passers)
V14_GROUPS: tuple[str, ...] = (*V13_GROUPS, "replies")
V14_FACTS: tuple[str, ...] = group_facts(V14_GROUPS)
