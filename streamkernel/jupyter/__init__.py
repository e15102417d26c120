"""streamkernel.jupyter"""
