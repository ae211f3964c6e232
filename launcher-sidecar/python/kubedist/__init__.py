"""kubedist: what the kubedist launcher gives the workers it starts (from kubedist import progress)."""
