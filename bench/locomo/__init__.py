"""LoCoMo retrieval benchmark: ``python -m bench.locomo``."""
