"""roost's wire protocol: length-prefixed JSON frames over TCP or Unix sockets.

See docs/protocol.md. Modules are imported on demand so that the blocking
client (``roost.net.syncclient``) used by command-line tools pulls in neither
asyncio nor the ClassAd library.
"""
