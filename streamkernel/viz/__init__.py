"""streamkernel.viz"""
