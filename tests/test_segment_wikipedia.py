"""Wikipedia dumps: streaming pages, page filters and wikitext reduced to prose."""

from __future__ import annotations

import bz2
import io
from pathlib import Path

import pytest
from conftest import shared_path

from pipelines.segment import input_formats, input_streams, wikipedia, wikitext

pytestmark = pytest.mark.backend_free

FIXTURES = Path(__file__).parent / "fixtures" / "segment"


def pages():
    return list(wikipedia.iter_pages(open(FIXTURES / "articles.xml", "rb")))


def test_iter_pages_reads_ids_namespaces_and_redirects():
    found = pages()
    assert [p.page_id for p in found] == [str(i) for i in range(10, 18)]
    assert [p.namespace for p in found][:3] == [0, 0, 1]
    assert [wikipedia.is_redirect(p) for p in found][:3] == [False, True, False]
    assert [p.title for p in found if wikipedia.is_disambiguation(p)] == ["Light (disambiguation)"]


def test_wikitext_to_paragraphs_keeps_only_prose():
    article = pages()[0]
    assert wikitext.wikitext_to_paragraphs(article.text) == [
        (
            "A lighthouse is a tower that emits light from a system of lamps and lenses. "
            "It serves as a navigational aid for maritime pilots at sea."
        ),
        (
            "The oldest known lighthouse stood in Alexandria for centuries. "
            "Its light was visible from far away on clear nights."
        ),
        "Sailors relied on the light to avoid the rocks near the harbour entrance at night.",
    ]


def test_nested_templates_tables_and_media_links_are_removed():
    text = (
        "a {{x|{{y|z}}|[[w]]}} b [[File:F.jpg|thumb|cap [[link]] [[o|p]]]] c [[keep|kept]] d }} e"
    )
    assert wikitext.strip_nested(text) == "a  b  c [[keep|kept]] d  e"
    table = "before\n{| class=x\n|-\n| {{t}} || cell\n{|\n| inner\n|}\n|}\nafter"
    assert wikitext.strip_nested(table) == "before\n\nafter"


def test_headings_are_not_glued_to_sentences_and_markup_is_gone():
    text = (
        "Intro with <small>small</small> text&nbsp;and &ndash; [http://x.org a site].<br/>More\n"
        "==History==\nBody ''text''<ref>cite</ref>.<!-- c -->\n"
        ":indented\n; term\n__NOTOC__\n</blockquote>"
    )
    assert wikitext.wikitext_to_paragraphs(text) == [
        "Intro with small text and – a site. More",
        "Body text.",
    ]


def test_shared_sample_streams_every_page():
    path = shared_path(
        "wikipedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    )
    with bz2.open(path) as stream:
        found = list(wikipedia.iter_pages(io.BufferedReader(stream)))
    assert len(found) == 206
    assert sum(wikipedia.is_redirect(p) for p in found) == 100
    assert (found[0].title, found[0].page_id, found[1].title) == (
        "AccessibleComputing",
        "10",
        "Anarchism",
    )


def test_inline_templates_that_carry_words_are_rendered():
    text = (
        "It is {{convert|30|m|ft}} high and {{convert|1|to|2|km}} long, from the Greek "
        "{{lang|grc|ἀναρχία}}, {{nowrap|10 May}}{{snd}}{{circa|1900}} {{cite web|url={{x}}}}."
    )
    assert wikitext.wikitext_to_paragraphs(text) == [
        "It is 30 m high and 1 to 2 km long, from the Greek ἀναρχία, 10 May – c. 1900."
    ]


def test_unclosed_reference_tag_does_not_swallow_the_page():
    text = 'One fact.<ref name="x">\nTwo facts here.<ref name="y"/> Three.<ref>gone</ref>'
    assert wikitext.wikitext_to_paragraphs(text) == ["One fact.", "Two facts here. Three."]


def test_multistream_dump_parts_are_read_as_one_stream():
    xml = (FIXTURES / "articles.xml").read_bytes()
    middle = xml.index(b"  <page>", 2000)
    data = bz2.compress(xml[:middle]) + bz2.compress(xml[middle:])
    with bz2.open(io.BytesIO(data)) as stream:
        assert [p.page_id for p in wikipedia.iter_pages(stream)] == [str(i) for i in range(10, 18)]


def test_localized_namespace_links_are_dropped_using_the_dumps_own_names():
    """bgwiki.xml: Bulgarian <namespaces> and the opening of Vazov's "Под игото" (1894, public
    domain)."""
    counts: dict[str, int] = {}
    with open(FIXTURES / "bgwiki.xml", "rb") as stream:
        documents = list(
            input_formats.read_documents(
                "bgwiki.xml",
                stream,
                "auto",
                inc=lambda name, n: counts.update({name: counts.get(name, 0) + n}),
            )
        )
    assert len(documents) == 1 and counts["skipped_namespace"] == 1
    assert input_formats.raw_paragraphs(documents[0]) == [
        "„Под игото“ е роман от Иван Вазов.",
        (
            "Тая прохладна майска вечер чорбаджи Марко, гологлав, по халат, вечеряше с челядта си "
            "на двора. "
            "Трапезата беше сложена, по обичаят, под асмата, между чешмата и розовия храст."
        ),
    ]


def test_german_names_and_the_local_image_alias():
    """The opening of the Grimms' "Der Froschkönig" (1857, public domain) with German namespace
    links."""
    site = wikipedia.SiteInfo("de", {6: "Datei", 14: "Kategorie", 10: "Vorlage", 4: "Wikipedia"})
    text = (
        "[[Datei:Froschkönig.jpg|mini|Illustration]]\n"
        "In den alten Zeiten, wo das Wünschen noch geholfen hat, lebte ein [[König]], dessen "
        "Töchter waren alle "
        "schön.\n[[Bild:Grimm.jpg|Die Brüder Grimm]]\n[[ kategorie : "
        "Märchen]]\n[[Wikipedia:Lesenswert|lesenswert]]\n"
        "[[Image:Frog.jpg|frog]]\n[[en:The Frog Prince]]"
    )
    assert wikitext.wikitext_to_paragraphs(site.canonical_links(text)) == [
        (
            "In den alten Zeiten, wo das Wünschen noch geholfen hat, lebte ein König, dessen "
            "Töchter "
            "waren alle schön."
        )
    ]
    # an English dump has no "Bild" alias: there it is an ordinary (article) link
    assert wikipedia.SiteInfo("en").canonical_links("[[Bild:X]]") == "[[Bild:X]]"


def test_page_whose_ns_is_not_a_number_is_named_or_skipped():
    xml = (FIXTURES / "articles.xml").read_bytes().replace(b"<ns>1</ns>", b"<ns>talk</ns>", 1)
    found = list(wikipedia.iter_pages(io.BytesIO(xml)))
    assert (found[2].namespace, found[2].problem) == (None, "<ns> is not a number ('talk')")
    with pytest.raises(
        input_streams.BadInput, match=r"^page 12 \('Talk:Lighthouse'\): <ns> is not a number"
    ):
        list(input_formats.read_documents("a.xml", io.BytesIO(xml), "auto", inc=lambda *a: None))
    counts: dict[str, int] = {}
    documents = list(
        input_formats.read_documents(
            "a.xml",
            io.BytesIO(xml),
            "auto",
            on_error="skip",
            inc=lambda name, n: counts.update({name: counts.get(name, 0) + n}),
        )
    )
    assert counts["skipped_bad_record"] == 1 and len(documents) == 5
