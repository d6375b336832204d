"""The demo people `make run` loads, so a newcomer can log in as each role at once."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import User
from accounts.services import user_create

# Printed on every `make run`; these accounts exist only where the demo was loaded on purpose.
DEMO_PASSWORD = "worldloom-demo"  # noqa: S105 - a published demo password, see load_demo's guard


@dataclass(frozen=True)
class DemoPerson:
    username: str
    role: str
    moderator: bool = False


DEMO_PEOPLE = (
    DemoPerson(username="demo-creator", role="creator"),
    DemoPerson(username="demo-player", role="player"),
    DemoPerson(username="demo-moderator", role="moderator", moderator=True),
)


def demo_people_ensure() -> list[DemoPerson]:
    """Create the demo accounts that do not exist yet; existing ones are left as they are."""
    for person in DEMO_PEOPLE:
        if not User.objects.filter(username=person.username).exists():
            user_create(
                username=person.username,
                email=f"{person.username}@example.com",
                password=DEMO_PASSWORD,
                moderator=person.moderator,
            )
    return list(DEMO_PEOPLE)
