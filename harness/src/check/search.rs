//! The capacity search, pure: the levels to measure (0, 1, 2, 4, ... up to
//! `--max-slow`), the verdict of one level, and the bisection between the
//! last level that was not denied and the first that was, so that the
//! answer is exact ("denied from 3 slow readers on").

use std::collections::BTreeMap;

use schema::LevelVerdict;

/// p95 of a level at or under this many times the baseline, without
/// errors, is held.
pub const HELD_RATIO: f64 = 10.0;
/// p95 at or over this many times the baseline is denied.
pub const DENIED_RATIO: f64 = 100.0;
/// p95 at or over this is denied whatever the baseline.
pub const DENIED_MS: f64 = 1000.0;
/// The default of `--noise-floor`: how far above the baseline a level's
/// p95 may be and still be held, whatever the ratio. It covers the
/// scheduling noise of a busy VM, where a p95 of a few milliseconds over a
/// 1 ms baseline is the host's, not the server's (the book's check
/// section gives the measurement).
pub const NOISE_FLOOR_MS: f64 = 20.0;
/// The largest `--noise-floor`: it must stay well under [`DENIED_MS`].
pub const MAX_NOISE_FLOOR_MS: f64 = 500.0;

/// How a route's levels are judged: against its baseline p95 with no slow
/// reader, with an absolute noise floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judge {
    pub baseline_ms: f64,
    pub noise_floor_ms: f64,
}

impl Judge {
    /// The p95 at or under which a level without errors is held:
    /// the larger of [`HELD_RATIO`] x the baseline and the baseline plus
    /// the noise floor.
    pub fn held_limit_ms(&self) -> f64 {
        (HELD_RATIO * self.baseline_ms).max(self.baseline_ms + self.noise_floor_ms)
    }

    /// The verdict of a level: `p95_ms` of the fast path (none when no
    /// request succeeded) and the fast path's errors and timeouts. Denied
    /// comes first: p95 >= [`DENIED_MS`], or >= [`DENIED_RATIO`] x the
    /// baseline, or any error, whatever the noise floor.
    pub fn verdict(&self, p95_ms: Option<f64>, errors: u64) -> LevelVerdict {
        match p95_ms {
            None => LevelVerdict::Denied,
            Some(_) if errors > 0 => LevelVerdict::Denied,
            Some(p) if p >= DENIED_MS || p >= DENIED_RATIO * self.baseline_ms => {
                LevelVerdict::Denied
            }
            Some(p) if p <= self.held_limit_ms() => LevelVerdict::Held,
            Some(_) => LevelVerdict::Degraded,
        }
    }
}

/// 0, 1, 2, 4, 8, ... up to `max_slow`, and `max_slow` itself.
pub fn doubling(max_slow: u32) -> Vec<u32> {
    let mut levels = vec![0];
    let mut n = 1u32;
    while n <= max_slow {
        levels.push(n);
        n = n.saturating_mul(2);
        if n == u32::MAX {
            break;
        }
    }
    if levels.last() != Some(&max_slow) {
        levels.push(max_slow);
    }
    levels
}

/// What the search found for one route.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Every level measured, in the order measured.
    pub levels: Vec<(u32, LevelVerdict)>,
    /// The smallest number of slow readers found denied.
    pub denied_from: Option<u32>,
    /// The largest number of slow readers found held.
    pub held_up_to: Option<u32>,
    /// The level at which the tester or the host ran out: the search
    /// stops there, since nothing above it can be judged either.
    pub inconclusive_from: Option<u32>,
    /// Whether the search stopped before it was done (`measure` said so).
    pub stopped: bool,
}

/// What measuring a level gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The level's verdict; the search goes on.
    Level(LevelVerdict),
    /// The level's verdict, and the search stops after it (the server did
    /// not recover).
    Last(LevelVerdict),
    /// Nothing measured; the search stops (the user interrupted).
    Stop,
}

/// Runs the search: `measure(n)` measures a level of `n` slow readers.
pub fn search<E>(max_slow: u32, measure: impl FnMut(u32) -> Result<Step, E>) -> Result<Outcome, E> {
    search_from(None, max_slow, measure)
}

/// [`search`] above `floor`, a level already found held: the doubling
/// levels over it, then the bisection between the last held one (at
/// least `floor`) and the first denied one. Used when a boundary did not
/// repeat: the search goes on above it.
pub fn search_from<E>(
    floor: Option<u32>,
    max_slow: u32,
    mut measure: impl FnMut(u32) -> Result<Step, E>,
) -> Result<Outcome, E> {
    let mut levels: Vec<(u32, LevelVerdict)> = Vec::new();
    let mut stopped = false;
    // Measures `n`; its verdict unless the search stops.
    let mut level =
        |n: u32, levels: &mut Vec<(u32, LevelVerdict)>| -> Result<Option<LevelVerdict>, E> {
            let (v, go_on) = match measure(n)? {
                Step::Level(v) => (v, true),
                Step::Last(v) => (v, false),
                Step::Stop => return Ok(None),
            };
            levels.push((n, v));
            Ok(go_on.then_some(v))
        };
    let mut last_ok: Option<u32> = floor;
    let mut first_denied: Option<u32> = None;
    let mut inconclusive = false;
    for n in doubling(max_slow)
        .into_iter()
        .filter(|n| floor.is_none_or(|f| *n > f))
    {
        match level(n, &mut levels)? {
            None => {
                stopped = true;
                break;
            }
            Some(LevelVerdict::Denied) => {
                first_denied = Some(n);
                break;
            }
            Some(LevelVerdict::Inconclusive) => {
                inconclusive = true;
                break;
            }
            Some(_) => last_ok = Some(n),
        }
    }
    if let (Some(mut hi), false) = (first_denied, stopped) {
        let mut lo = last_ok;
        while let Some(l) = lo.filter(|l| hi - l > 1) {
            let mid = l + (hi - l) / 2;
            match level(mid, &mut levels)? {
                None => {
                    stopped = true;
                    break;
                }
                Some(LevelVerdict::Denied) => hi = mid,
                Some(LevelVerdict::Inconclusive) => {
                    inconclusive = true;
                    break;
                }
                Some(_) => lo = Some(mid),
            }
        }
    }
    let inconclusive_from = inconclusive
        .then(|| {
            levels
                .iter()
                .filter(|(_, v)| *v == LevelVerdict::Inconclusive)
                .map(|(n, _)| *n)
                .min()
        })
        .flatten();
    let denied_from = levels
        .iter()
        .filter(|(_, v)| *v == LevelVerdict::Denied)
        .map(|(n, _)| *n)
        .min();
    let held_up_to = levels
        .iter()
        .filter(|(_, v)| *v == LevelVerdict::Held)
        .map(|(n, _)| *n)
        .max();
    Ok(Outcome {
        levels,
        denied_from,
        held_up_to,
        inconclusive_from,
        stopped,
    })
}

/// The boundary levels a search found, to measure again: the last level
/// below the first denied one that was not denied, and the first denied
/// one (either may be missing).
pub fn boundary(o: &Outcome) -> [Option<u32>; 2] {
    let Some(d) = o.denied_from else {
        return [None, None];
    };
    let below = o
        .levels
        .iter()
        .filter(|(n, v)| *n < d && *v != LevelVerdict::Denied)
        .map(|(n, _)| *n)
        .max()
        .filter(|n| *n > 0);
    [below, Some(d)]
}

/// How the boundary held up when measured again.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The fewest slow clients denied in most of their runs.
    pub denied_from: Option<u32>,
    /// For each boundary level: its slow clients, the runs that agreed with
    /// the search's verdict, and the runs.
    pub agreement: Vec<(u32, usize, usize)>,
    /// Where the boundary did not repeat, the lowest and the highest number
    /// of slow clients it may lie at (no highest: above the levels tried).
    pub range: Option<(u32, Option<u32>)>,
    /// The largest number of slow clients held in most of its runs.
    pub held_up_to: Option<u32>,
    /// A first denial that most of its runs did not repeat: its slow
    /// clients, its denied runs and its runs.
    pub transient: Option<(u32, usize, usize)>,
}

/// The boundary that its repeats overturned, when the search should go on
/// above it: the first denied level was held in most of its runs, and
/// there are levels above it to try.
pub fn overturned(o: &Outcome, s: &Settled, max_slow: u32) -> Option<u32> {
    let d = o.denied_from?;
    (s.denied_from.is_none() && !o.stopped && o.inconclusive_from.is_none() && d < max_slow)
        .then_some(d)
}

/// The outcome of a search that went on above an overturned boundary
/// (`more`, from [`search_from`]) after the first (`old`): every level, in
/// the order measured, and the boundary found above.
pub fn resumed(old: Outcome, more: Outcome) -> Outcome {
    let mut levels = old.levels;
    levels.extend(more.levels);
    Outcome {
        levels,
        denied_from: more.denied_from,
        held_up_to: more.held_up_to.max(old.held_up_to),
        inconclusive_from: more.inconclusive_from,
        stopped: more.stopped,
    }
}

/// The boundary after its repetitions (`verdicts`: every verdict of each
/// level, the search's first). A level counts as denied when most of its
/// runs were; a first denial that most of its runs held is a transient,
/// and the level counts as held.
pub fn settle(o: &Outcome, verdicts: &BTreeMap<u32, Vec<LevelVerdict>>) -> Settled {
    let denied_runs = |n: u32| {
        let v = verdicts.get(&n).map(Vec::as_slice).unwrap_or(&[]);
        (
            v.iter().filter(|x| **x == LevelVerdict::Denied).count(),
            v.len(),
        )
    };
    let [below, at] = boundary(o);
    let mut agreement = Vec::new();
    let mut range = None;
    let mut denied_from = o.denied_from;
    let mut held_up_to = o.held_up_to;
    let mut transient = None;
    if let Some(d) = at {
        let (denied, runs) = denied_runs(d);
        agreement.push((d, denied, runs));
        if denied < runs {
            range = Some((d, None));
        }
        if denied * 2 <= runs {
            denied_from = None;
            transient = Some((d, denied, runs));
            let held = verdicts.get(&d).map_or(0, |v| {
                v.iter().filter(|x| **x == LevelVerdict::Held).count()
            });
            if held * 2 > runs {
                held_up_to = held_up_to.max(Some(d));
            }
        }
    }
    if let Some(l) = below {
        let (denied, runs) = denied_runs(l);
        agreement.insert(0, (l, runs - denied, runs));
        if denied > 0 {
            range = Some((l, at));
        }
        if denied * 2 > runs {
            denied_from = Some(l);
        }
    }
    Settled {
        denied_from,
        agreement,
        range,
        held_up_to,
        transient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LevelVerdict::*;

    #[test]
    fn a_boundary_its_repeats_overturn_is_searched_above() {
        // 512 denied once (a transient), held when measured again; the
        // server's real boundary is 700.
        let mut first = true;
        let mut measure = |n: u32| -> Result<Step, ()> {
            let denied = n >= 700 || (n == 512 && std::mem::take(&mut first));
            Ok(Step::Level(if denied { Denied } else { Held }))
        };
        let o = search(1024, &mut measure).unwrap();
        assert_eq!(o.denied_from, Some(512));
        let mut verdicts: BTreeMap<u32, Vec<LevelVerdict>> = BTreeMap::new();
        for (n, v) in &o.levels {
            verdicts.entry(*n).or_default().push(*v);
        }
        for n in boundary(&o).into_iter().flatten() {
            for _ in 0..2 {
                if let Ok(Step::Level(v)) = measure(n) {
                    verdicts.entry(n).or_default().push(v);
                }
            }
        }
        let s = settle(&o, &verdicts);
        assert_eq!(s.denied_from, None);
        assert_eq!(s.transient, Some((512, 1, 3)));
        assert_eq!(s.held_up_to, Some(512));
        assert_eq!(overturned(&o, &s, 1024), Some(512));
        let more = search_from(Some(512), 1024, &mut measure).unwrap();
        assert_eq!(more.levels.first(), Some(&(1024, Denied)), "{more:?}");
        let r = resumed(o, more);
        assert_eq!(r.denied_from, Some(700));
        assert_eq!(r.held_up_to, Some(699));
        // A boundary that repeats, or one at the top, is left as it is.
        let at_top = Outcome {
            denied_from: Some(1024),
            ..r.clone()
        };
        assert_eq!(overturned(&at_top, &s, 1024), None);
        let kept = Settled {
            denied_from: Some(700),
            ..s
        };
        assert_eq!(overturned(&r, &kept, 1024), None);
    }

    fn verdict(
        p95: Option<f64>,
        errors: u64,
        baseline_ms: f64,
        noise_floor_ms: f64,
    ) -> LevelVerdict {
        Judge {
            baseline_ms,
            noise_floor_ms,
        }
        .verdict(p95, errors)
    }

    #[test]
    fn verdicts_follow_the_definitions() {
        // Without a noise floor: the ratios.
        assert_eq!(verdict(Some(4.0), 0, 1.0, 0.0), Held);
        assert_eq!(verdict(Some(10.0), 0, 1.0, 0.0), Held);
        assert_eq!(verdict(Some(10.5), 0, 1.0, 0.0), Degraded);
        assert_eq!(verdict(Some(99.9), 0, 1.0, 0.0), Degraded);
        assert_eq!(verdict(Some(100.0), 0, 1.0, 0.0), Denied);
        assert_eq!(verdict(Some(2.0), 1, 1.0, 0.0), Denied);
        assert_eq!(verdict(None, 0, 1.0, 0.0), Denied);
        // 1 s is denied even when the baseline is slow.
        assert_eq!(verdict(Some(1000.0), 0, 200.0, 0.0), Denied);
        assert_eq!(verdict(Some(900.0), 0, 50.0, 0.0), Degraded);
        assert_eq!(verdict(Some(900.0), 0, 200.0, 0.0), Held);
    }

    #[test]
    fn the_noise_floor_holds_small_absolute_rises_and_denies_nothing_less() {
        let floor = NOISE_FLOOR_MS;
        // A 1 ms baseline: held up to 1 + 20 = 21 ms, not only 10 ms.
        let j = Judge {
            baseline_ms: 1.0,
            noise_floor_ms: floor,
        };
        assert_eq!(j.held_limit_ms(), 21.0);
        assert_eq!(verdict(Some(12.0), 0, 1.0, floor), Held);
        assert_eq!(verdict(Some(21.0), 0, 1.0, floor), Held);
        assert_eq!(verdict(Some(21.01), 0, 1.0, floor), Degraded);
        assert_eq!(verdict(Some(99.9), 0, 1.0, floor), Degraded);
        assert_eq!(verdict(Some(100.0), 0, 1.0, floor), Denied);
        // Errors are denied however close the p95 is.
        assert_eq!(verdict(Some(1.0), 1, 1.0, floor), Denied);
        assert_eq!(verdict(None, 0, 1.0, floor), Denied);
        // A slow baseline: 10x is the larger limit, the floor changes nothing.
        let j = Judge {
            baseline_ms: 5.0,
            noise_floor_ms: floor,
        };
        assert_eq!(j.held_limit_ms(), 50.0);
        assert_eq!(verdict(Some(50.0), 0, 5.0, floor), Held);
        assert_eq!(verdict(Some(50.1), 0, 5.0, floor), Degraded);
        // Where 100x the baseline is under baseline + floor, denied wins.
        assert_eq!(verdict(Some(15.0), 0, 0.1, floor), Denied);
        assert_eq!(verdict(Some(9.9), 0, 0.1, floor), Held);
        // 1 s stays denied at the largest floor.
        assert_eq!(verdict(Some(1000.0), 0, 200.0, MAX_NOISE_FLOOR_MS), Denied);
        assert_eq!(verdict(Some(510.0), 0, 10.0, MAX_NOISE_FLOOR_MS), Held);
        assert_eq!(verdict(Some(510.5), 0, 10.0, MAX_NOISE_FLOOR_MS), Degraded);
    }

    #[test]
    fn levels_double_up_to_the_maximum() {
        assert_eq!(doubling(64), [0, 1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(doubling(5), [0, 1, 2, 4, 5]);
        assert_eq!(doubling(1), [0, 1]);
    }

    /// A server with `handlers` handlers: denied from `handlers` slow
    /// readers on, degraded one below when `degraded_below`.
    fn server(handlers: u32, degraded_below: bool) -> impl FnMut(u32) -> Result<Step, ()> {
        move |n| {
            Ok(Step::Level(if n >= handlers {
                Denied
            } else if degraded_below && n + 1 == handlers {
                Degraded
            } else {
                Held
            }))
        }
    }

    #[test]
    fn the_bisection_finds_the_exact_capacity() {
        for handlers in 1..=40 {
            let o = search(64, server(handlers, false)).unwrap();
            assert_eq!(o.denied_from, Some(handlers), "{o:?}");
            assert_eq!(o.held_up_to, Some(handlers - 1), "{o:?}");
            let measured: Vec<u32> = o.levels.iter().map(|(n, _)| *n).collect();
            let mut unique = measured.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), measured.len(), "no level twice: {measured:?}");
        }
        let sync2 = search(64, server(2, false)).unwrap();
        assert_eq!(sync2.levels, [(0, Held), (1, Held), (2, Denied)]);
        let threads4 = search(64, server(4, false)).unwrap();
        assert_eq!(
            threads4.levels,
            [(0, Held), (1, Held), (2, Held), (4, Denied), (3, Held)]
        );
        let o = search(64, server(6, true)).unwrap();
        assert_eq!((o.denied_from, o.held_up_to), (Some(6), Some(4)));
    }

    #[test]
    fn a_server_that_holds_is_held_up_to_the_maximum_and_a_stop_stops() {
        let o = search(8, server(u32::MAX, false)).unwrap();
        assert_eq!(
            (o.denied_from, o.held_up_to, o.stopped),
            (None, Some(8), false)
        );
        let mut calls = 0;
        let o = search(64, |n| {
            calls += 1;
            Ok::<_, ()>(if n < 2 { Step::Level(Held) } else { Step::Stop })
        })
        .unwrap();
        assert!(o.stopped);
        assert_eq!(calls, 3);
        assert_eq!(o.held_up_to, Some(1));
        // A denied level after which the server did not recover still counts.
        let o = search(64, |n| {
            Ok::<_, ()>(match n {
                0 | 1 => Step::Level(Held),
                _ => Step::Last(Denied),
            })
        })
        .unwrap();
        assert_eq!((o.denied_from, o.stopped), (Some(2), true));
        assert_eq!(o.levels.len(), 3);
        assert_eq!(search(8, |_| Err::<Step, _>("boom")), Err("boom"));
    }

    #[test]
    fn an_inconclusive_level_ends_the_search_there() {
        let o = search(64, |n| {
            Ok::<_, ()>(Step::Level(match n {
                0..=4 => Held,
                _ => Inconclusive,
            }))
        })
        .unwrap();
        assert_eq!(o.inconclusive_from, Some(8));
        assert_eq!((o.denied_from, o.held_up_to), (None, Some(4)));
        assert_eq!(o.levels.last(), Some(&(8, Inconclusive)));
        // Inside the bisection too.
        let o = search(64, |n| {
            Ok::<_, ()>(Step::Level(match n {
                0..=8 => Held,
                16 => Denied,
                _ => Inconclusive,
            }))
        })
        .unwrap();
        assert_eq!((o.denied_from, o.inconclusive_from), (Some(16), Some(12)));
    }

    #[test]
    fn a_boundary_that_repeats_is_exact_and_one_that_does_not_is_a_range() {
        let o = search(64, server(3, false)).unwrap();
        assert_eq!(boundary(&o), [Some(2), Some(3)]);
        let runs = |l: &[LevelVerdict], d: &[LevelVerdict]| {
            BTreeMap::from([(2, l.to_vec()), (3, d.to_vec())])
        };
        let s = settle(&o, &runs(&[Held, Held, Held], &[Denied, Denied, Denied]));
        assert_eq!(s.denied_from, Some(3));
        assert_eq!(s.agreement, vec![(2, 3, 3), (3, 3, 3)]);
        assert_eq!(s.range, None);
        // 3 denied in 2 runs of 3: still denied from 3, but it may lie higher.
        let s = settle(&o, &runs(&[Held, Degraded, Held], &[Denied, Held, Denied]));
        assert_eq!(s.denied_from, Some(3));
        assert_eq!(s.range, Some((3, None)));
        // 2 was denied in two runs of three: from 2, between 2 and 3.
        let s = settle(
            &o,
            &runs(&[Held, Denied, Denied], &[Denied, Denied, Denied]),
        );
        assert_eq!(s.denied_from, Some(2));
        assert_eq!(s.range, Some((2, Some(3))));
        assert_eq!(s.agreement[0], (2, 1, 3));
        // 3 held in two runs of three: not denied at all.
        let s = settle(&o, &runs(&[Held, Held, Held], &[Denied, Held, Held]));
        assert_eq!(s.denied_from, None);
        // Nothing denied: no boundary.
        let held = search(8, server(u32::MAX, false)).unwrap();
        assert_eq!(boundary(&held), [None, None]);
    }
}
