//! Scenario variants: one file, several runs that differ in a few keys, compared side by
//! side (an L4S run and a classic run of the same network and traffic, say).
//!
//! ```toml
//! [[variants]]
//! name = "l4s"
//!
//! [[variants]]
//! name = "classic"
//! set = { "topology.aqm" = { kind = "fifo", limit = 1000 }, "flows.xr.ecn" = "not-ect" }
//! ```
//!
//! `set` maps a dotted key path to its value in that variant. `flows.<name>` names a flow
//! by its `name`; other paths go through tables, creating missing ones. Each variant is the
//! file with its `set` applied (edited with `toml_edit`, so the layout and the line numbers
//! of untouched keys are kept) and validated like any scenario: an error names the
//! variant, the file, the line and the key.

use crate::error::ScenarioError;
use std::path::Path;
use toml_edit::{DocumentMut, InlineTable, Item, TableLike};

/// One run of a scenario file: the variant's name (`None` for a file without variants)
/// and the validated scenario.
pub type Variant = (Option<String>, crate::Scenario);

fn err(file: &Path, key: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        file: file.to_path_buf(),
        line: None,
        key: key.to_string(),
        message: message.into(),
    }
}

/// Read a scenario file and expand its variants.
pub fn load_variants(path: &Path) -> Result<Vec<Variant>, ScenarioError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| err(path, "", format!("cannot read the scenario file: {e}")))?;
    variants_of(&text, path)
}

/// Expand the variants of scenario text (`file` names it in errors).
pub fn variants_of(text: &str, file: &Path) -> Result<Vec<Variant>, ScenarioError> {
    variants_with(text, file, &[], crate::Caller::Cli)
}

/// [`variants_of`] with keys set in every variant after its own `set` (`--set KEY=VALUE`
/// on the command line): `VALUE` is TOML (`50`, `true`, `"50Mbit"`, `{ kind = "fifo" }`),
/// or else a string (`50Mbit`). Errors name a key set so as `caller` spells it.
pub fn variants_with(
    text: &str,
    file: &Path,
    sets: &[(String, String)],
    caller: crate::Caller,
) -> Result<Vec<Variant>, ScenarioError> {
    let Ok(doc) = text.parse::<DocumentMut>() else {
        // Let the ordinary loader report the syntax error with its line.
        return crate::load_str(text, file).map(|s| vec![(None, s)]);
    };
    // The variants are what the file's [[variants]] tables make of it, not a key to set.
    if let Some((k, _)) = sets
        .iter()
        .find(|(k, _)| k == "variants" || k.starts_with("variants.") || k.starts_with("variants["))
    {
        return Err(err(
            file,
            &caller.set_key(k),
            format!(
                "the variants are the file's [[variants]] tables: choose among them with {}, or write them in the file",
                caller.option("variant")
            ),
        ));
    }
    let sets: Vec<(String, Item)> = sets.iter().map(|(k, v)| (k.clone(), set_value(v))).collect();
    let mut out = Vec::new();
    for (name, text) in variant_texts(doc, file)? {
        let (_, mut sc) = load_with_sets(&text, file, &sets, caller).map_err(|mut e| {
            if let Some(name) = &name {
                e.message = format!("in variant {name:?}: {}", e.message);
            }
            e
        })?;
        sc.share_draws(out.iter().map(|(_, s)| s));
        out.push((name, sc));
    }
    Ok(out)
}

/// One scenario's text (a variant's, or a file's without variants) with `sets` applied
/// over its keys, and the scenario it loads as. An error at a key that was set, which the
/// text as written does not hold, says which key set it, as `caller` spells it.
pub fn load_with_sets(
    text: &str,
    file: &Path,
    sets: &[(String, Item)],
    caller: crate::Caller,
) -> Result<(String, crate::Scenario), ScenarioError> {
    let original = text;
    // Each key set, and the key the loader names in its errors.
    let mut set_at: Vec<(&str, String)> = Vec::new();
    let text = if sets.is_empty() {
        text.to_string()
    } else {
        let mut d: DocumentMut = text.parse().map_err(|e| err(file, "", format!("{e}")))?;
        for (k, v) in sets {
            if k.contains(['[', ']']) {
                return Err(err(
                    file,
                    &caller.set_key(k),
                    "expected a dotted key path, such as \"topology.rate\" or \"flows.<name>.cc\" (a flow by its name, not a number)",
                ));
            }
            let at = set_path_at(&mut d, k, v.clone()).map_err(|m| err(file, &caller.set_key(k), m))?;
            set_at.push((k.as_str(), at));
        }
        d.to_string()
    };
    let sc = crate::load_str(&text, file).map_err(|mut e| {
        // The line is the file's as the user wrote it (the sets may have added lines): of
        // the key, or else of its table; none when the key blamed is one a set added.
        let key = crate::error::parse_path(&e.key);
        if !set_at.is_empty() && !e.key.is_empty() {
            e.line = crate::error::locate(original, &key);
        }
        if let Some((k, at)) = set_at
            .iter()
            .find(|(_, at)| !e.key.is_empty() && (key_within(&e.key, at) || key_within(at, &e.key)))
        {
            if !crate::error::has_key(original, &crate::error::parse_path(at)) {
                e.line = None;
            }
            e.message = format!("{} (set by {})", e.message, caller.set_key(k));
        } else if !set_at.is_empty() && crate::load_str(original, file).is_ok() {
            // A key the sets did not touch, found wrong against one they did (a warm-up
            // no shorter than a duration set lower): the sets made it so.
            let keys: Vec<String> = set_at.iter().map(|(k, _)| caller.set_key(k)).collect();
            e.message = format!("{} (after {})", e.message, keys.join(", "));
        }
        e
    })?;
    Ok((text, sc))
}

/// Whether key path `a` is `b` or a key inside it (`flows[1].cc` is within `flows[1]`, and
/// `flows[10]` is not).
fn key_within(a: &str, b: &str) -> bool {
    a.strip_prefix(b)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// A `--set` value: TOML where it is TOML, else the text as a string.
fn set_value(v: &str) -> Item {
    match format!("x = {v}").parse::<DocumentMut>() {
        Ok(d) => match d.get("x") {
            Some(Item::Value(x)) => Item::Value(x.clone()),
            _ => toml_edit::value(v),
        },
        Err(_) => toml_edit::value(v),
    }
}

/// The text of each variant of a scenario document (the document itself, as one unnamed
/// variant, when it has no `[[variants]]`), not yet validated: each is the document without
/// its `[[variants]]`, with the variant's `set` applied. A front end that edits the
/// scenario first (a campaign's swept parameters, say) passes the edited document.
pub fn variant_texts(mut doc: DocumentMut, file: &Path) -> Result<Vec<(Option<String>, String)>, ScenarioError> {
    let Some(vars) = doc.remove("variants") else {
        return Ok(vec![(None, doc.to_string())]);
    };
    let Some(vars) = vars.as_array_of_tables() else {
        return Err(err(
            file,
            "variants",
            "expected [[variants]] tables, each with a `name` and a `set` table",
        ));
    };
    if vars.is_empty() {
        return Err(err(file, "variants", "expected at least one [[variants]] table"));
    }
    let mut names: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (i, v) in vars.iter().enumerate() {
        let at = |k: &str| format!("variants[{i}].{k}");
        for (k, _) in v.iter() {
            if k != "name" && k != "set" {
                return Err(err(file, &at(k), "unknown key: a variant has `name` and `set`"));
            }
        }
        let name = v
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or_else(|| {
                err(
                    file,
                    &at("name"),
                    "required key `name` is missing (a short name such as \"l4s\")",
                )
            })?
            .to_string();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            || name.starts_with('.')
        {
            return Err(err(
                file,
                &at("name"),
                format!("{name:?}: expected letters, digits, '-', '_' or '.', not starting with '.' (it names a results directory)"),
            ));
        }
        // What the set's folder holds beside the variants' directories.
        let beside = [
            ("compare.html", "the comparison page"),
            ("compare-png", "the folder of the comparison page's charts"),
            ("variants.json", "the set's manifest"),
        ];
        if let Some((_, what)) = beside.iter().find(|(n, _)| *n == name) {
            return Err(err(
                file,
                &at("name"),
                format!("{name:?} is {what} beside the variants' directories: choose another name"),
            ));
        }
        if names.contains(&name) {
            return Err(err(file, &at("name"), format!("variant name {name:?} is used twice")));
        }
        names.push(name.clone());
        let mut d = doc.clone();
        if let Some(set) = v.get("set") {
            let Some(set) = set.as_table_like() else {
                return Err(err(file, &at("set"), "expected a table of \"dotted.key\" = value"));
            };
            for (path, value) in set.iter() {
                set_path(&mut d, path, value.clone()).map_err(|m| err(file, &format!("{}.{path:?}", at("set")), m))?;
            }
        }
        out.push((Some(name), d.to_string()));
    }
    Ok(out)
}

/// Set `path` (dotted; `flows.<name>` selects a flow by name, `topology.links.<name>` a
/// link of a custom topology by its name, `topology.wifi.<name>` a Wi-Fi BSS by its name
/// and `topology.wifi.<name>.stations.<node>` one of its stations by its node,
/// `topology.cell.<name>` a cell and `topology.cell.<name>.ues.<node>` one of its UEs) to
/// `value` in `doc`.
/// Tables keep their form (an inline table stays inline), so the edited text is valid
/// TOML with every untouched key where it was. `flows.<name>` itself set to a table
/// replaces the flow's keys (its `name` stays): one flow becomes another kind of traffic.
pub fn set_path(doc: &mut DocumentMut, path: &str, value: Item) -> Result<(), String> {
    set_path_at(doc, path, value).map(|_| ())
}

/// A string value of `t` at `key`, or "" where there is none.
fn str_key(t: &toml_edit::Table, key: &str) -> String {
    t.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_string()
}

/// "no link named "0"; the scenario's links are "cable", "cmts->server"": what a path named
/// that is not there, with the names it could have taken (entries are picked by name, not
/// by their place in the file).
fn absent(what: &str, name: &str, names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    let by_place = if name.parse::<usize>().is_ok() {
        " (entries are named, not numbered)"
    } else {
        ""
    };
    format!(
        "no {what} named {name:?}{by_place}; the scenario's {what}s: {}",
        names.join(", ")
    )
}

/// [`set_path`], returning the key it set as the loader's errors name it, with the index
/// of each array element it picked by name (`flows.p.cc` -> `flows[0].cc`), so that an
/// error in that key can be traced to the `set` that brought it.
fn set_path_at(doc: &mut DocumentMut, path: &str, value: Item) -> Result<String, String> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err("expected a dotted key path such as \"topology.aqm.kind\"".into());
    }
    if segs.len() > 32 {
        return Err(format!(
            "a key path has at most 32 parts, found {} (no scenario key is nested that deep)",
            segs.len()
        ));
    }
    let mut tbl: &mut dyn TableLike = doc.as_table_mut();
    let mut i = 0;
    // The part of the path picked by name, as the loader names it.
    let mut at = String::new();
    if segs[0] == "flows" {
        let name = *segs
            .get(1)
            .ok_or("name a flow and a key, such as \"flows.<name>.ecn\"")?;
        let flows = tbl
            .get_mut("flows")
            .and_then(|f| f.as_array_of_tables_mut())
            .ok_or("the scenario has no [[flows]]")?;
        let Some(k) = flows
            .iter()
            .position(|t| t.get("name").and_then(|n| n.as_str()) == Some(name))
        else {
            return Err(absent("flow", name, flows.iter().map(|t| str_key(t, "name"))));
        };
        let t = flows.get_mut(k).ok_or("the flow just found")?;
        at = format!("flows[{k}]");
        if segs.len() == 2 {
            let Some(new) = value.as_table_like() else {
                return Err(
                    "name a key of the flow, such as \"flows.<name>.ecn\", or give a table of the flow's keys to replace them".into(),
                );
            };
            if new.contains_key("name") {
                return Err("the flow keeps its name: leave `name` out of the table".into());
            }
            let old: Vec<String> = t.iter().map(|(k, _)| k.to_string()).filter(|k| k != "name").collect();
            for k in old {
                t.remove(&k);
            }
            for (k, v) in new.iter() {
                t.insert(k, v.clone());
            }
            return Ok(at);
        }
        tbl = t;
        i = 2;
    } else if segs.len() >= 2 && segs[0] == "topology" && segs[1] == "links" {
        let (Some(name), true) = (segs.get(2), segs.len() >= 4) else {
            return Err("name a link and a key, such as \"topology.links.<name>.aqm\"".into());
        };
        let links = tbl
            .get_mut("topology")
            .and_then(|t| t.as_table_like_mut())
            .and_then(|t| t.get_mut("links"))
            .and_then(|l| l.as_array_of_tables_mut())
            .ok_or("the scenario has no [[topology.links]]")?;
        // A link's name, or the name it gets without one ("from->to").
        let link_name = |t: &toml_edit::Table| match t.get("name").and_then(|n| n.as_str()) {
            Some(n) => n.to_string(),
            None => format!("{}->{}", str_key(t, "from"), str_key(t, "to")),
        };
        let Some(k) = links.iter().position(|t| link_name(t) == *name) else {
            return Err(absent("link", name, links.iter().map(link_name)));
        };
        let t = links.get_mut(k).ok_or("the link just found")?;
        at = format!("topology.links[{k}]");
        tbl = t;
        i = 3;
    } else if segs.len() >= 2 && segs[0] == "topology" && (segs[1] == "wifi" || segs[1] == "cell") {
        // A Wi-Fi BSS and its stations, or a cell and its UEs: by name ("wifi" or "cell"
        // without one), members by their node.
        let (kind, what, members, member) = if segs[1] == "wifi" {
            ("wifi", "BSS", "stations", "station")
        } else {
            ("cell", "cell", "ues", "UE")
        };
        let (Some(name), true) = (segs.get(2), segs.len() >= 4) else {
            return Err(format!(
                "name a {what} and a key, such as \"topology.{kind}.<name>.aqm\""
            ));
        };
        let all = tbl
            .get_mut("topology")
            .and_then(|t| t.as_table_like_mut())
            .and_then(|t| t.get_mut(kind))
            .and_then(|l| l.as_array_of_tables_mut())
            .ok_or_else(|| format!("the scenario has no [[topology.{kind}]]"))?;
        let own_name = |t: &toml_edit::Table| t.get("name").and_then(|n| n.as_str()).unwrap_or(kind).to_string();
        let Some(k) = all.iter().position(|t| own_name(t) == *name) else {
            return Err(absent(what, name, all.iter().map(own_name)));
        };
        let one = all.get_mut(k).ok_or("the entry just found")?;
        at = format!("topology.{kind}[{k}]");
        if segs[3] == members {
            let (Some(node), true) = (segs.get(4), segs.len() >= 6) else {
                return Err(format!(
                    "name a {member} by its node and a key, such as \"topology.{kind}.<name>.{members}.<node>.{}\"",
                    if kind == "wifi" { "mcs" } else { "rate" }
                ));
            };
            let list = one
                .get_mut(members)
                .and_then(|l| l.as_array_of_tables_mut())
                .ok_or_else(|| format!("{what} {name:?} has no [[topology.{kind}.{members}]]"))?;
            let Some(m) = list
                .iter()
                .position(|t| t.get("node").and_then(|n| n.as_str()) == Some(*node))
            else {
                let nodes: Vec<String> = list.iter().map(|t| format!("{:?}", str_key(t, "node"))).collect();
                return Err(format!(
                    "{what} {name:?} has no {member} on node {node:?}; its {member}s are on {}",
                    nodes.join(", ")
                ));
            };
            let t = list.get_mut(m).ok_or("the entry just found")?;
            at = format!("{at}.{members}[{m}]");
            tbl = t;
            i = 5;
        } else {
            tbl = one;
            i = 3;
        }
    }
    let named_end = i;
    while i + 1 < segs.len() {
        let s = segs[i];
        if tbl.get(s).is_none() {
            tbl.insert(s, Item::Value(toml_edit::Value::InlineTable(InlineTable::new())));
        }
        let next = tbl.get_mut(s).expect("just inserted");
        tbl = next
            .as_table_like_mut()
            .ok_or_else(|| format!("`{}` is not a table", segs[..=i].join(".")))?;
        i += 1;
    }
    tbl.insert(segs[segs.len() - 1], value);
    Ok(if at.is_empty() {
        path.to_string()
    } else {
        format!("{at}.{}", segs[named_end..].join("."))
    })
}
