"""JSON records in an untyped stream: parse and enrich them in map, filter on the parsed nested fields, print with Python's str(); modelled on PyFlink's process_json_data example."""
import json

from streamkernel.datastream import StreamExecutionEnvironment

SHIPMENTS = [
    (7, '{"parcel": "P-7", "grams": 1200, "route": {"from": "Oslo", "to": "Bergen"}}'),
    (8, '{"parcel": "P-8", "grams": 300, "route": {"from": "Oslo", "to": "Tromso"}}'),
    (9, '{"parcel": "P-9", "grams": 4500, "route": {"from": "Bergen", "to": "Oslo"}}'),
    (10, '{"parcel": "P-10", "grams": 800, "route": {"from": "Oslo", "to": "Stavanger"}}'),
    (11, '{"parcel": "P-11", "grams": 2500, "route": {"from": "Trondheim", "to": "Oslo"}}'),
]

PACKAGING_GRAMS = 150


def add_packaging(record):
    shipment_id, text = record
    parcel = json.loads(text)
    parcel["grams"] += PACKAGING_GRAMS
    parcel["heavy"] = parcel["grams"] > 1000
    return shipment_id, parcel


def leaves_oslo(record):
    # the second field is already a dict: no need to parse it again
    return record[1]["route"]["from"] == "Oslo"


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(SHIPMENTS).map(add_packaging).filter(leaves_oslo).print()
    env.execute("json-shipments")
