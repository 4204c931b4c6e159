"""tests/python/checkpoint_text.py: helpers for tests that edit checkpoint texts on purpose. A
checkpoint ends with a checksum line (FNV-1a-64 of every byte before it, docs/checkpoint.md), so a
test that forges a field recomputes the line to reach that field's own check."""


def checksum(data: bytes) -> str:
    """The 16 hex digits of FNV-1a-64 over data, as the checksum line carries them."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def edit(text: str, old: str, new: str) -> str:
    """text with the first old replaced by new and its checksum line (if any) recomputed."""
    text = text.replace(old, new, 1)
    at = text.rfind("\nchecksum=")
    if at < 0:
        return text
    body = text[: at + 1]
    return body + "checksum=" + checksum(body.encode()) + "\n"
