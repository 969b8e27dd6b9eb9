"""Getting data in and out: parsers of other products' exports (detected by content), the
archive format, and the writers of exported documents. Pure: bytes in, values out (the one
exception is :mod:`engram.portability.reading`, which opens the user's file or folder with
limits). The service layer (:mod:`engram.service.portability`) stores what they produce through
the same paths as live data.
"""
