"""The toolkit's version: one place, read by the package metadata, the public face and the tuning records."""
__version__ = "0.1.0"
