//! Checks on the built mdBook (`book/`), run by CI after `mdbook build`:
//!
//! - [`links`]: every relative link, `#anchor` and image in the HTML resolves — on disk, with
//!   no browser, so it is fast and always available;
//! - [`browser`]: every page loads in headless Chromium with no JavaScript error and no image
//!   that failed to load — what a reader would actually see — with screenshots to look at;
//! - [`axe`]: in the same tab, axe-core's WCAG A/AA audit of every page, mdBook's own chrome
//!   listed apart;
//! - [`calculator`]: the in-page calculator's committed WebAssembly module answers what the
//!   engine answers natively, and its widget shows those answers;
//! - [`quiz`]: one predict-then-check quiz answered from the keyboard, wrongly then rightly;
//! - [`words`]: the words a reader sees on each page of the lesson, counted in the rendered
//!   page, against the count the book prints.
//!
//! The checks that open pages share a [`session`] (a tab on the book, served by [`serve`]),
//! which drives the browser through [`chromium`].

pub mod axe;
pub mod browser;
pub mod calculator;
pub mod chromium;
pub mod links;
pub mod quiz;
pub mod replay;
pub mod serve;
pub mod session;
pub mod site;
pub mod words;
