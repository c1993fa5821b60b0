"""The command line (`denpex ...`): the top layer, which may import every other.

`main.py` holds the app and the diagnose, hang, serve, eval and rules commands; `hybrid.py`
the `denpex hybrid` and `denpex curate` groups; `cache.py` where parsed signatures and
compiled databases are kept between runs.
"""

from denpex.cli.main import app, main

__all__ = ["app", "main"]
