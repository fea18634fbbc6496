//! What the viewer's benchmarks share.

/// A `/proc/self/status` figure in kB (`VmHWM:` the peak resident memory, `VmRSS:` now); 0
/// when it cannot be read.
pub fn rss_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The viewer on `cap` without a filter, in a `w`×`h` test terminal with its first frame drawn:
/// what `iocap view` shows before any question is answered. Returns the app, the effects its
/// start asks for (the first query) and the terminal.
pub fn first_frame(
    cap: iocap_tui::capture::Capture,
    w: u16,
    h: u16,
) -> (
    iocap_tui::app::App,
    iocap_tui::app::Effects,
    ratatui::Terminal<ratatui::backend::TestBackend>,
) {
    use iocap_tui::app::App;
    use iocap_tui::history::History;
    use iocap_tui::theme::Palette;
    use ratatui::backend::TestBackend;
    use ratatui::layout::Rect;
    use ratatui::Terminal;

    let (app, fx) = App::new(
        cap,
        "",
        Rect::new(0, 0, w, h),
        Palette::Classic,
        History::in_memory(Vec::new()),
    )
    .unwrap();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| iocap_tui::ui::render(&app, f)).unwrap();
    (app, fx, term)
}
