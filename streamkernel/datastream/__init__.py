"""streamkernel.datastream"""
