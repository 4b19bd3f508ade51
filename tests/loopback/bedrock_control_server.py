"""A stand-in for Bedrock's control plane (the ``bedrock`` API, not the runtime): the model
access a region grants, as ``GetFoundationModelAvailability`` and ``GetInferenceProfile``
answer it. moto has no such API, so boto3 is pointed here (``AWS_ENDPOINT_URL_BEDROCK``).

    with BedrockControlServer() as bedrock:
        bedrock.grant("anthropic.claude-3-haiku-20240307-v1:0")   # access granted in the region
        bedrock.deny("anthropic.claude-3-haiku-20240307-v1:0")    # offered, access not requested
        bedrock.add_profile("us.anthropic.claude-3-5-haiku-20241022-v1:0")
An unknown model or profile gets Bedrock's 404 ``ResourceNotFoundException``.
"""

from __future__ import annotations

from urllib.parse import unquote

from . import Answer, LoopbackServer, Recorded

AVAILABILITY = "/foundation-model-availability/"
PROFILES = "/inference-profiles/"


class BedrockControlServer(LoopbackServer):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.models: dict[str, dict] = {}
        self.profiles: dict[str, str] = {}  # id -> status

    def grant(self, model_id: str) -> None:
        self.models[model_id] = _availability(model_id, authorized=True)

    def deny(self, model_id: str) -> None:
        self.models[model_id] = _availability(model_id, authorized=False)

    def add_profile(self, profile_id: str, status: str = "ACTIVE") -> None:
        self.profiles[profile_id] = status

    def default_answer(self, request: Recorded) -> Answer:
        path = unquote(request.path.split("?")[0])
        if request.method == "GET" and path.startswith(AVAILABILITY):
            model_id = path.removeprefix(AVAILABILITY)
            if model_id in self.models:
                return Answer(200, self.models[model_id])
            return _not_found(f"The model {model_id} does not exist.")
        if request.method == "GET" and path.startswith(PROFILES):
            profile_id = path.removeprefix(PROFILES)
            if profile_id in self.profiles:
                return Answer(
                    200,
                    {
                        "inferenceProfileId": profile_id,
                        "inferenceProfileName": profile_id,
                        "inferenceProfileArn": f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{profile_id}",
                        "status": self.profiles[profile_id],
                        "type": "SYSTEM_DEFINED",
                        "models": [],
                    },
                )
            return _not_found(f"The inference profile {profile_id} does not exist.")
        return super().default_answer(request)


def _availability(model_id: str, *, authorized: bool) -> dict:
    return {
        "modelId": model_id,
        "agreementAvailability": {"status": "AVAILABLE"},
        "authorizationStatus": "AUTHORIZED" if authorized else "NOT_AUTHORIZED",
        "entitlementAvailability": "AVAILABLE",
        "regionAvailability": "AVAILABLE",
    }


def _not_found(message: str) -> Answer:
    return Answer(404, {"message": message}, headers={"x-amzn-ErrorType": "ResourceNotFoundException"})
