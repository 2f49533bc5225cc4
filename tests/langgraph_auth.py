"""An auth handler for a test's `langgraph dev`: a request passes with the header
`x-api-key: test-key`, any other gets a 401 (LangGraph's own auth, as a deployment sets
it in langgraph.json's "auth")."""

from __future__ import annotations

from langgraph_sdk import Auth

KEY = "test-key"
auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> str:
    if headers.get(b"x-api-key") != KEY.encode():
        raise Auth.exceptions.HTTPException(status_code=401, detail="an API key is needed")
    return "tester"
