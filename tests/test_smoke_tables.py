def test_every_table_is_created_with_its_indexes(dynamo):
    client, settings = dynamo
    memories = client.describe_table(TableName=settings.table_names["memories"])["Table"]
    assert {i["IndexName"] for i in memories["LocalSecondaryIndexes"]} == {"by_updated"}
    assert {i["IndexName"] for i in memories["GlobalSecondaryIndexes"]} == {
        "stale",
        "review_queue",
        "by_user",
        "ending",
    }
    log = client.describe_table(TableName=settings.table_names["memory_log"])["Table"]
    assert {i["IndexName"] for i in log["GlobalSecondaryIndexes"]} == {"by_run", "by_user"}
    messages = client.describe_table(TableName=settings.table_names["messages"])["Table"]
    assert {i["IndexName"] for i in messages["GlobalSecondaryIndexes"]} == {
        "by_jst_day",
        "by_conversation",
        "by_author",
        "by_conversation_of",
    }
    ttl = client.describe_time_to_live(TableName=settings.table_names["dedup"])
    assert ttl["TimeToLiveDescription"]["AttributeName"] == "expiration"
