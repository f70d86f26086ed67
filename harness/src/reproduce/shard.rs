//! `--shard K/N`: one machine's part of a matrix split across machines (a
//! Slurm array task, a Kubernetes Indexed Job pod). Run *i* of the plan
//! (counting from 0) belongs to shard `i % N + 1`, so every shard gets a
//! share of every condition and of every repetition; runs keep the ids they
//! have in the whole plan, so `slowlab merge` of all N shards numbers them
//! as one unsharded reproduction would.

use std::fmt;
use std::str::FromStr;

use catalogue::preset::RunSpec;

/// The largest number of shards: far more machines than a matrix has runs.
pub const MAX_SHARDS: u32 = 1000;

/// Shard `index` of `count`, both counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}`: expected K/N with 1 <= K <= N <= {MAX_SHARDS}, e.g. 2/4");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count || count > MAX_SHARDS {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The runs of the plan that belong to this shard, with their ids.
    pub fn select(self, plan: Vec<RunSpec>) -> Vec<RunSpec> {
        plan.into_iter()
            .enumerate()
            .filter(|(i, _)| *i as u32 % self.count + 1 == self.index)
            .map(|(_, r)| r)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::preset::{Preset, plan};

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse::<Shard>().unwrap().to_string(), "1/1");
        for bad in ["0/4", "5/4", "4", "a/b", "1/0", "1/1001", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_partition_the_plan_and_keep_run_ids() {
        let whole = plan(&[Preset::Seed], None, None);
        let mut ids: Vec<String> = (1..=4)
            .flat_map(|k| Shard { index: k, count: 4 }.select(whole.clone()))
            .map(|r| r.run_id)
            .collect();
        ids.sort();
        let all: Vec<String> = whole.iter().map(|r| r.run_id.clone()).collect();
        assert_eq!(ids, all);
        let first = Shard { index: 1, count: 4 }.select(whole.clone());
        assert_eq!(first[0].run_id, "001");
        assert_eq!(first[1].run_id, "005");
        // More shards than runs: the extra shards are empty.
        assert!(
            Shard {
                index: 31,
                count: 31
            }
            .select(whole)
            .is_empty()
        );
    }
}
