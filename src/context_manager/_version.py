__version__ = "0.1.0"
WIRE_API_VERSION = "1.1.6"
