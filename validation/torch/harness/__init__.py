"""headroom's CPU ground truth: exact memory instruments and transformers-style modules (see ../README.md)."""
