"""streamkernel.datastream.connectors"""
