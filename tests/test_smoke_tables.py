def test_every_table_is_created_with_its_indexes(dynamo):
    client, settings = dynamo
    memories = client.describe_table(TableName=settings.table_names["memories"])["Table"]
    assert {i["IndexName"] for i in memories["LocalSecondaryIndexes"]} == {"by_updated"}
    assert {i["IndexName"] for i in memories["GlobalSecondaryIndexes"]} == {"stale", "review_queue"}
    ttl = client.describe_time_to_live(TableName=settings.table_names["dedup"])
    assert ttl["TimeToLiveDescription"]["AttributeName"] == "expiration"
