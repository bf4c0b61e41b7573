"""The persistent object the ZODB adapter stores: one per key, holding the value dyno wrote.

A module of its own (not the adapter's `__main__`), so that the class is named the same in
every process that unpickles it: sessions, and a ZEO server resolving a conflict.
"""

import persistent


class PObject(persistent.Persistent):
    """One object of the shootout: its bytes, as dyno wrote them."""

    def __init__(self, data):
        self.data = data
