"""Gallery pages: the home page and one page per category."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from gallery.categories import CATEGORY_BLURBS, Category


def home(request: HttpRequest) -> HttpResponse:
    categories = [(category, CATEGORY_BLURBS[category]) for category in Category]
    return render(request, "gallery/home.html", {"categories": categories})


def category_page(request: HttpRequest, category: str) -> HttpResponse:
    if category not in Category.values:
        raise Http404("No such gallery category")
    chosen = Category(category)
    return render(request, "gallery/category.html", {"category": chosen, "blurb": CATEGORY_BLURBS[chosen]})
