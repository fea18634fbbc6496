//! The panes. Each draws one rectangle of the frame from a shared `&App` and changes nothing;
//! their keys are decided in [`crate::keys`] and their state changes in [`crate::App::update`].

pub mod breakdown;
pub mod events;
pub mod filter_bar;
pub mod histogram;
pub mod spectrogram;
