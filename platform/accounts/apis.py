"""JSON API about the signed-in person and their API token."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

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


class TokenObtainApi(ObtainAuthToken):
    """Username and password in, a token for the `Authorization: Token …` header out."""

    # Guessing passwords here must be as slow as on the log-in page, which django-allauth throttles.
    throttle_classes = [AnonRateThrottle]


urlpatterns = [
    path("me/", MeApi.as_view(), name="api-me"),
    path("token/", TokenObtainApi.as_view(), name="api-token"),
]
