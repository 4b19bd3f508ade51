"""The CDK app that deploys memorybot (run through cdk.json: ``python3 infra/app.py``)."""
