"""Retrieval: hybrid search with a five-factor score, and context assembly."""
