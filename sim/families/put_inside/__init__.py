"""Put-inside: put a graspable object inside a container (an open bin, a LIBERO bowl, an open drawer)."""

from sim.families.put_inside.family import BOWLS, Bowl, PutInside, bowl_scale

__all__ = ["BOWLS", "Bowl", "PutInside", "bowl_scale"]
