"""In-memory copies of the stored vectors, shared by the SQLite and PostgreSQL stores: 8-bit
codes in blocks (:mod:`.matrix`) and the search stages over them (:mod:`.copies`)."""
