"""reason stage."""
