"""JSON API about the signed-in person and their API token."""

from __future__ import annotations

from typing import Any

from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import Throttled
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from accounts.lockout import sign_in_failure_record, sign_in_locked
from accounts.selectors import user_roles


class MeApi(APIView):
    """Who the caller is and which roles they hold."""

    permission_classes = [IsAuthenticated]

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()
        display_name = serializers.CharField()
        roles = serializers.ListField(child=serializers.CharField())

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        user = request.user
        data = {
            "id": user.pk,
            "username": user.username,
            "display_name": user.display_name,
            "roles": user_roles(user=user),
        }
        return Response(self.OutputSerializer(data).data)


class TokenWithCodeSerializer(AuthTokenSerializer):
    """Username and password, and the authenticator app's code for an account that has one: a token must not
    be a way around the second factor the log-in page asks for (moderators are required to have one)."""

    code = serializers.CharField(required=False, allow_blank=True, write_only=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The backend refuses a locked account anyway; asking first answers 429 with the wait, not "wrong".
        locked = sign_in_locked(login=attrs.get("username", ""))
        if locked:
            raise Throttled(wait=locked.retry_after, detail=str(locked))
        attrs = super().validate(attrs)
        authenticator = Authenticator.objects.filter(user=attrs["user"], type=Authenticator.Type.TOTP).first()
        if authenticator is not None and not TOTP(authenticator).validate_code(attrs.get("code", "")):
            # A guessed code counts as a guessed password does: the lock-out bounds both.
            sign_in_failure_record(login=attrs["username"])
            raise serializers.ValidationError(
                "this account uses an authenticator app: send its current code as 'code'", code="authorization"
            )
        return attrs


class TokenObtainApi(ObtainAuthToken):
    """Username and password (and an authenticator code where the account has one) in, a token for the
    `Authorization: Token …` header out."""

    serializer_class = TokenWithCodeSerializer
    # ObtainAuthToken names DRF's parsers itself; the settings' list holds the bounded JSON parser.
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES
    # Per address; the lock-out per account (accounts.lockout) is shared with the log-in pages and the admin.
    throttle_classes = [AnonRateThrottle]


urlpatterns = [
    path("me/", MeApi.as_view(), name="api-me"),
    path("token/", TokenObtainApi.as_view(), name="api-token"),
]
