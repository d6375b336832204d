"""`{{ listing|card }}`: a listing's card (gallery.cards)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from gallery.cards import Card, card_html
from gallery.models import Listing

register = template.Library()


@register.filter
def card(listing: Listing) -> SafeString:
    return card_html(Card.of(listing))
