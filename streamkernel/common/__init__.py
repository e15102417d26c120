"""streamkernel.common"""
