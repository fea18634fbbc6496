//! `iocap export --format svg` drawing a comparison: two heatmaps on shared axes and colour
//! scale, the two distributions overlaid. Every figure drawn is checked against what `report`
//! says of each side alone, on synthetic captures with a known shift.

use std::collections::HashMap;
use std::path::Path;

use iocap_analysis::units::fmt_ns;
use iocap_format::Event;
use iocap_testkit::add_proc;

use crate::compare::{calls as capture, json_in, ok_in};
use crate::util::iocap;

const START: u64 = 1_000_000_000;

/// A heatmap cell: where it is drawn, its fill, and what its title says.
#[derive(Debug)]
struct Cell {
    x: f64,
    y: f64,
    fill: String,
    /// Start of its time column, s since its capture's start.
    t0: f64,
    count: u64,
}

/// The cells of the group `id`.
fn cells(doc: &roxmltree::Document, id: &str) -> Vec<Cell> {
    let group = doc
        .descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no {id}"));
    group
        .children()
        .filter(|n| n.has_tag_name("rect"))
        .map(|r| {
            // `0.500s – 0.505s, 17.8us – 20us: 3 events`
            let title = r.first_element_child().unwrap().text().unwrap();
            let (when, count) = title.rsplit_once(": ").unwrap();
            Cell {
                x: r.attribute("x").unwrap().parse().unwrap(),
                y: r.attribute("y").unwrap().parse().unwrap(),
                fill: r.attribute("fill").unwrap().to_string(),
                t0: when.split('s').next().unwrap().parse().unwrap(),
                count: count.trim_end_matches(" events").parse().unwrap(),
            }
        })
        .collect()
}

/// The counts of the points of the distribution series `id`.
fn series(doc: &roxmltree::Document, id: &str) -> Vec<u64> {
    let group = doc
        .descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no {id}"));
    assert_eq!(
        group.children().filter(|n| n.has_tag_name("polyline")).count(),
        1,
        "{id}: one line"
    );
    group
        .children()
        .filter(|n| n.has_tag_name("circle"))
        .map(|c| {
            // `A: 17.8us – 20us: 100 events (10%)`
            let title = c.first_element_child().unwrap().text().unwrap();
            let (_, rest) = title.rsplit_once(": ").unwrap();
            rest.split(" events").next().unwrap().parse().unwrap()
        })
        .collect()
}

/// The lines of text of the element `id`.
fn texts<'a>(doc: &'a roxmltree::Document, id: &str) -> Vec<&'a str> {
    doc.descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no {id}"))
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect()
}

/// What `report --json` says of one side: matched, and the figures the picture prints.
fn reported(dir: &Path, args: &[&str]) -> (u64, Vec<String>) {
    let mut all = vec!["report"];
    all.extend(args);
    all.push("--json");
    let v = json_in(dir, &all);
    let l = &v["latency_ns"];
    let ns = |k: &str| fmt_ns(l[k].as_u64().unwrap());
    let matched = v["matched"].as_u64().unwrap();
    (
        matched,
        vec![
            format!("{matched} events"),
            format!("p50 {}", ns("p50")),
            format!("p90 {}", ns("p90")),
            format!("p99 {}", ns("p99")),
            format!("max {}", ns("max")),
        ],
    )
}

#[test]
fn two_captures_share_axes_and_colour_scale() {
    let dir = tempfile::tempdir().unwrap();
    // A: 1000 calls over 1 s. B: 20000 over 2 s (ten times as dense), db's an octave slower.
    capture(dir.path(), "before.cap", false, 1000, 1_000_000);
    capture(dir.path(), "after.cap", true, 20_000, 100_000);
    let svg = ok_in(
        dir.path(),
        &["export", "before.cap", "after.cap", "--format", "svg", "-o", "-"],
    );
    // To look at it: IOCAP_KEEP_SVG=/tmp/cmp.svg cargo test --test integration compare_svg
    if let Some(keep) = std::env::var_os("IOCAP_KEEP_SVG") {
        std::fs::write(keep, &svg).unwrap();
    }
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let (a, b) = (cells(&doc, "cells-a"), cells(&doc, "cells-b"));
    let (a_matched, a_figures) = reported(dir.path(), &["before.cap"]);
    let (b_matched, b_figures) = reported(dir.path(), &["after.cap"]);
    assert_eq!((a_matched, b_matched), (1000, 20_000));
    // Every event in one cell of its side, and one point of its series.
    assert_eq!(a.iter().map(|c| c.count).sum::<u64>(), a_matched);
    assert_eq!(b.iter().map(|c| c.count).sum::<u64>(), b_matched);
    assert_eq!(series(&doc, "dist-a").iter().sum::<u64>(), a_matched);
    assert_eq!(series(&doc, "dist-b").iter().sum::<u64>(), b_matched);
    // Beside the distribution, each side's count and percentiles, as `report` reads them.
    assert_eq!(texts(&doc, "figures-a")[1..], a_figures[..]);
    assert_eq!(texts(&doc, "figures-b")[1..], b_figures[..]);
    // One time axis, of the longer capture: a column starts at the same x on both sides, and
    // A's second ends half-way across.
    let mut x_of = HashMap::new();
    for c in a.iter().chain(&b) {
        let x = *x_of.entry(c.t0.to_bits()).or_insert(c.x);
        assert!((x - c.x).abs() < 0.01, "{c:?}: x {x} on the other side");
    }
    let last = |cs: &[Cell]| cs.iter().map(|c| c.t0).fold(0.0, f64::max);
    assert!(last(&a) < 1.0 && last(&b) > 1.9, "{} {}", last(&a), last(&b));
    assert!(a.iter().all(|c| c.x < 80.0 + 400.0), "A within the first half");
    // One latency axis: B's db calls are drawn above everything of A's.
    let top = |cs: &[Cell]| cs.iter().map(|c| c.y).fold(f64::MAX, f64::min);
    let a_top_in_panel = top(&a) - top(&a).min(top(&b));
    assert!(a_top_in_panel >= 0.0);
    let a_low = a.iter().map(|c| c.y).fold(0.0, f64::max);
    let b_low = b.iter().map(|c| c.y).fold(0.0, f64::max);
    let (a_rows, b_rows) = (a_low - top(&a), b_low - top(&b));
    assert!(b_rows > a_rows, "B spans more latency rows: {b_rows} vs {a_rows}");
    // One colour scale: a count has one shade on both sides, and only the densest side has
    // the darkest.
    let mut fill_of = HashMap::new();
    for c in a.iter().chain(&b) {
        let f = fill_of.entry(c.count).or_insert(c.fill.clone());
        assert_eq!(*f, c.fill, "{} events", c.count);
    }
    let max = |cs: &[Cell]| cs.iter().map(|c| c.count).max().unwrap();
    assert!(max(&b) > max(&a), "B is denser: {} vs {}", max(&b), max(&a));
    assert_ne!(
        fill_of[&max(&a)],
        fill_of[&max(&b)],
        "A's densest cell is not the darkest"
    );
    let legend = texts(&doc, "legend");
    assert!(
        legend.last().unwrap().ends_with(&format!("{}", max(&b))),
        "the legend reaches B's max: {legend:?}"
    );
}

#[test]
fn one_capture_two_filters_with_a_hostile_name() {
    let dir = tempfile::tempdir().unwrap();
    let name = "a<b&c\"'\u{1b}]0;x\u{7}.cap";
    capture(dir.path(), name, true, 1000, 1_000_000);
    let out = ok_in(
        dir.path(),
        &[
            "export",
            name,
            "latency>20us",
            "--a",
            "proc.name=app",
            "--b",
            "proc.name=db and latency<40us",
            "--format",
            "svg",
            "-o",
            "-",
        ],
    );
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "no control bytes");
    let doc = roxmltree::Document::parse(&out).expect("well-formed XML");
    let headings: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("font-weight") == Some("bold") && n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    let shown = "a<b&c\"'\\x1b]0;x\\x07.cap";
    assert!(
        headings.contains(&format!("A: {shown} ((latency>20us) and (proc.name=app))").as_str()),
        "{headings:?}"
    );
    assert!(
        headings.contains(&format!("B: {shown} ((latency>20us) and (proc.name=db and latency<40us))").as_str()),
        "{headings:?}"
    );
    // Each side holds what `report` matches with its filter: app's calls above 20 µs (7 of its
    // 10 latencies), db's below 40 µs (3 of its shifted 10).
    for (id, filter, want) in [
        ("a", "latency>20us and proc.name=app", 350),
        ("b", "latency>20us and proc.name=db and latency<40us", 150),
    ] {
        let (matched, figures) = reported(dir.path(), &[name, filter]);
        assert_eq!(matched, want, "{filter}");
        assert_eq!(
            cells(&doc, &format!("cells-{id}")).iter().map(|c| c.count).sum::<u64>(),
            matched
        );
        assert_eq!(series(&doc, &format!("dist-{id}")).iter().sum::<u64>(), matched);
        assert_eq!(texts(&doc, &format!("figures-{id}"))[1..], figures[..]);
    }
    // The same from standard input, read once for both sides.
    let cmp = iocap()
        .current_dir(dir.path())
        .args(["export", "-", "--a", "proc.name=app", "--b", "proc.name=db"])
        .args(["--format", "svg", "-o", "-"])
        .stdin(std::fs::File::open(dir.path().join(name)).unwrap())
        .output()
        .unwrap();
    assert!(cmp.status.success(), "{}", String::from_utf8_lossy(&cmp.stderr));
    let svg = String::from_utf8(cmp.stdout).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(series(&doc, "dist-a").iter().sum::<u64>(), 500);
    assert_eq!(series(&doc, "dist-b").iter().sum::<u64>(), 500);
    // A filter word is still a filter word: one heatmap.
    let one = ok_in(
        dir.path(),
        &["export", name, "proc.name=app", "--format", "svg", "-o", "-"],
    );
    let doc = roxmltree::Document::parse(&one).unwrap();
    assert_eq!(cells(&doc, "cells").iter().map(|c| c.count).sum::<u64>(), 500);
    assert!(!doc.descendants().any(|n| n.attribute("id") == Some("cells-b")));
}

#[test]
fn a_comparison_is_only_drawn() {
    let dir = tempfile::tempdir().unwrap();
    capture(dir.path(), "a.cap", false, 100, 1_000_000);
    capture(dir.path(), "b.cap", true, 100, 1_000_000);
    for (args, says) in [
        (&["a.cap", "b.cap", "--format", "csv"][..], "`b.cap` names a file"),
        (
            &["a.cap", "--a", "proc.name=app", "--format", "jsonl"][..],
            "--a and --b",
        ),
        (&["a.cap", "--b", "latency>", "--format", "svg"][..], "bad filter"),
        (&["a.cap", "b.cap", "latency>", "--format", "svg"][..], "bad filter"),
    ] {
        let out = iocap()
            .current_dir(dir.path())
            .arg("export")
            .args(args)
            .args(["-o", "out"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        if says != "bad filter" {
            assert!(err.contains("--format svg") && err.lines().count() == 1, "{err}");
        }
        assert!(!dir.path().join("out").exists(), "{args:?}: nothing written");
    }
}

/// An event that starts at the capture's very end is a column of its own on the time axis: it
/// was left out of the heatmap, and its side's cells fell one short of its count.
#[test]
fn an_event_at_the_capture_end_is_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("end.cap");
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(START), 128, 1);
    let app = add_proc(&mut w, 100, 1, b"app");
    for ts in [START, START + 1_000_000_000] {
        let e = Event {
            proc: app,
            ..Event::syscall(ts, 20_000, 100, 100, 0, 0)
        };
        w.push(&e).unwrap();
    }
    w.finish(START + 1_000_000_000).unwrap();
    let svg = ok_in(dir.path(), &["export", "end.cap", "--format", "svg", "-o", "-"]);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let drawn = cells(&doc, "cells");
    assert_eq!(drawn.iter().map(|c| c.count).sum::<u64>(), 2, "{drawn:?}");
    assert!(drawn.iter().all(|c| c.x < 80.0 + 800.0), "inside the plot: {drawn:?}");
}
