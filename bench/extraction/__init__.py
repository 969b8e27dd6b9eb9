"""Extraction benchmark on LoCoMo (see ``python -m bench.extraction --help``)."""
