"""Server benchmark: real ``engram serve`` processes under concurrent HTTP clients (see
``__main__``)."""
