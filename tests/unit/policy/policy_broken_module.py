raise RuntimeError("boom at import")
