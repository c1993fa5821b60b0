"""denpex: failure diagnosis for distributed ML training and inference runs."""

__version__ = "0.1.0"
