"""The ops' declarations, one module each: the interface and the float64 reference of an op."""
