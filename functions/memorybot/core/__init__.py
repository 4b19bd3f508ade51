"""The core: the domain, its ports, the typed messages between functions, and one use case per flow.

It knows nothing of boto3, httpx, Discord payloads or HTTP.
"""
