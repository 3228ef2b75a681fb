"""Pydantic mirrors of contracts/*.ts (the zod side is the source of truth).

chat.py mirrors chat.ts; train.py (written beside it) mirrors train.ts. Import from the submodules so
that one side missing never breaks the other.
"""
