"""streamkernel.graph"""
