"""streamkernel.runtime"""
