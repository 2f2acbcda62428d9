//! `holon debug bench salvage`: `holon store salvage` of a store damaged
//! as disks and careless copies damage one: its header overwritten, every
//! branch page of its tree overwritten, a tenth of its pages overwritten
//! with random bytes, the file cut in half. For each, the share of events
//! and of records the salvaged store holds, and the time salvage took (the
//! copy alone, and with the losses recorded, the indexes rebuilt and the
//! result verified, as the command does). Two stores: one of ~1,500 pages
//! for the ratios, one of ~140 MB for the time.

use std::path::Path;
use std::time::Instant;

use crate::store::{Keyed, Store, StoreOptions};

/// Events and tool execution records in a store, as the engine reads it.
async fn count(path: &Path) -> anyhow::Result<(u64, u64)> {
    let store = Store::open(path, StoreOptions::default())?;
    let (mut events, mut records) = (0, 0);
    {
        let rx = store.read()?;
        let agents: Vec<serde_json::Value> = rx.agents()?;
        for a in agents {
            let id = a["id"].as_str().unwrap_or_default().to_owned();
            let mut from = 0;
            loop {
                let page = rx.events_raw(&id, from, 10_000)?;
                let Some((last, _)) = page.last() else { break };
                from = last + 1;
                events += page.len() as u64;
            }
            records += rx.count(Keyed::ToolExecutions, &id)?;
        }
    }
    store.close().await?;
    Ok((events, records))
}

/// A damage shape: its name, and what it does to the file's bytes.
type Damage = (&'static str, fn(&mut Vec<u8>));

/// The damage shapes.
fn shapes() -> Vec<Damage> {
    const PAGE: usize = 4096;
    fn random(bytes: &mut [u8], seed: u64) {
        let mut x = seed | 1;
        for b in bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
    vec![
        ("header overwritten", |b| random(&mut b[..PAGE], 1)),
        ("every branch page overwritten", |b| {
            // Type byte 2, then a zero: what each branch page of the
            // tree (and any old copy of one) starts with.
            for p in 1..b.len() / PAGE {
                if b[p * PAGE] == 2 && b[p * PAGE + 1] == 0 {
                    random(&mut b[p * PAGE..(p + 1) * PAGE], p as u64);
                }
            }
        }),
        ("10% of pages randomised", |b| {
            let pages = b.len() / PAGE;
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..pages / 10 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let p = x as usize % pages;
                random(&mut b[p * PAGE..(p + 1) * PAGE], x);
            }
        }),
        ("cut in half", |b| b.truncate(b.len() / 2 / PAGE * PAGE)),
    ]
}

pub(super) async fn run(dir: &Path) -> anyhow::Result<()> {
    for (agents, events, timed) in [(4, 5_000, false), (100, 8_000, true)] {
        let intact = dir.join(format!("salvage-{agents}.redb"));
        crate::store::salvage::sample(&intact, agents, events).await?;
        let bytes = std::fs::read(&intact)?;
        let (all_events, all_records) = count(&intact).await?;
        println!(
            "store.salvage     a store of {:.1} MB ({} pages): {all_events} events, {all_records} records",
            bytes.len() as f64 / 1e6,
            bytes.len() / 4096
        );
        for (name, damage) in shapes() {
            if timed && name != "header overwritten" && name != "10% of pages randomised" {
                continue;
            }
            let mut broken = bytes.clone();
            damage(&mut broken);
            let (src, out) = (dir.join("broken.redb"), dir.join("salvaged.redb"));
            let _ = std::fs::remove_file(&out);
            std::fs::write(&src, &broken)?;
            let copy = {
                let (s, o) = (src.clone(), dir.join("copy-only.redb"));
                let _ = std::fs::remove_file(&o);
                let started = Instant::now();
                tokio::task::spawn_blocking(move || {
                    crate::store::salvage::salvage(&s, &o, &crate::runtime::repair::classify_record)
                })
                .await??;
                started.elapsed()
            };
            let started = Instant::now();
            let done = super::store_cmd::salvage_and_repair(&src, &out).await?;
            let whole = started.elapsed();
            let (kept_events, kept_records) = count(&out).await?;
            let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
            println!(
                "store.salvage       {name}: {:.1}% of events, {:.1}% of records; {} rows from pages; copy {:.2} s, with verify {:.2} s{}",
                pct(kept_events, all_events),
                pct(kept_records, all_records),
                done.report.tables.iter().map(|t| t.scanned).sum::<u64>(),
                copy.as_secs_f64(),
                whole.as_secs_f64(),
                match done.check.problems.len() {
                    0 => String::new(),
                    n => format!("; verify found {n} problems"),
                }
            );
        }
        let _ = std::fs::remove_file(&intact);
    }
    Ok(())
}
