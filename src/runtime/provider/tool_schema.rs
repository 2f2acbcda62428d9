//! Provider emission of tool input schemas (spec: Provider Tool Schema
//! Contract). `ToolSpec.input_schema` stays the transport-neutral source
//! schema; this module derives what goes on the wire.
//!
//! `Relaxed` (the runtime default) disables `additionalProperties` on every
//! object schema that does not already constrain it with a schema of its own
//! (maps stay maps). `Strict` additionally requires every property and turns
//! source-optional properties into nullable ones (enums gain `null`).
//! Both recurse through properties, array items, `anyOf`/`oneOf`/`allOf`
//! and `$defs`/`definitions`. Tool names are never touched.

use serde_json::{Map, Value};

/// How tool schemas are emitted to providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaMode {
    Relaxed,
    Strict,
}

impl SchemaMode {
    /// The `strict` flag OpenAI function tools carry.
    pub fn strict_flag(self) -> bool {
        match self {
            SchemaMode::Relaxed => false,
            SchemaMode::Strict => true,
        }
    }
}

/// The emitted form of a source schema.
pub fn emit_schema(source: &Value, mode: SchemaMode) -> Value {
    let mut out = source.clone();
    normalize(&mut out, mode);
    out
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties")
}

fn normalize(value: &mut Value, mode: SchemaMode) {
    let Value::Object(map) = value else {
        return;
    };
    if is_object_schema(map) {
        match map.get("additionalProperties") {
            Some(Value::Object(_)) => {}
            Some(_) | None => {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
        }
        match mode {
            SchemaMode::Relaxed => {}
            SchemaMode::Strict => make_strict(map),
        }
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            for child in children.values_mut() {
                normalize(child, mode);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            normalize(child, mode);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            for child in children {
                normalize(child, mode);
            }
        }
    }
}

fn make_strict(map: &mut Map<String, Value>) {
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(props)) = map.get_mut("properties") else {
        map.insert("properties".into(), Value::Object(Map::new()));
        map.insert("required".into(), Value::Array(Vec::new()));
        return;
    };
    let mut all = Vec::with_capacity(props.len());
    for (name, prop) in props.iter_mut() {
        if !required.contains(name) {
            make_nullable(prop);
        }
        all.push(Value::String(name.clone()));
    }
    map.insert("required".into(), Value::Array(all));
}

fn make_nullable(prop: &mut Value) {
    let Value::Object(map) = prop else {
        return;
    };
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            map.insert("type".into(), Value::Array(vec![t.into(), "null".into()]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push("null".into());
        }
        Some(_) => {}
        None => {
            if let Some(Value::Array(any)) = map.get_mut("anyOf") {
                if !any
                    .iter()
                    .any(|s| s.get("type") == Some(&Value::from("null")))
                {
                    any.push(serde_json::json!({"type": "null"}));
                }
            } else if map.contains_key("$ref")
                || map.contains_key("oneOf")
                || map.contains_key("allOf")
            {
                // A bare reference (or composition) cannot carry `null` in
                // place: wrap it, keeping annotations such as the default
                // and description beside the union.
                let mut inner = serde_json::Map::new();
                for key in ["$ref", "oneOf", "allOf"] {
                    if let Some(v) = map.remove(key) {
                        inner.insert(key.to_owned(), v);
                    }
                }
                map.insert(
                    "anyOf".into(),
                    Value::Array(vec![
                        Value::Object(inner),
                        serde_json::json!({"type": "null"}),
                    ]),
                );
            }
        }
    }
    if let Some(Value::Array(variants)) = map.get_mut("enum") {
        if !variants.contains(&Value::Null) {
            variants.push(Value::Null);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source() -> Value {
        json!({
            "type": "object",
            "properties": {
                "cmd": {"type": "string"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "opts": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "integer"}}}}
            },
            "required": ["cmd"]
        })
    }

    #[test]
    fn relaxed_disables_additional_properties_but_keeps_maps() {
        let out = emit_schema(&source(), SchemaMode::Relaxed);
        assert_eq!(out["additionalProperties"], json!(false));
        assert_eq!(
            out["properties"]["env"]["additionalProperties"],
            json!({"type": "string"})
        );
        assert_eq!(
            out["properties"]["opts"]["items"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(out["required"], json!(["cmd"]));
        assert_eq!(out["properties"]["mode"]["type"], json!("string"));
    }

    #[test]
    fn strict_requires_all_and_makes_optionals_nullable() {
        let out = emit_schema(&source(), SchemaMode::Strict);
        let mut req: Vec<String> = out["required"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        req.sort();
        assert_eq!(req, vec!["cmd", "env", "mode", "opts"]);
        assert_eq!(out["properties"]["cmd"]["type"], json!("string"));
        assert_eq!(out["properties"]["mode"]["type"], json!(["string", "null"]));
        assert_eq!(out["properties"]["mode"]["enum"], json!(["a", "b", null]));
        assert_eq!(out["properties"]["opts"]["items"]["required"], json!(["k"]));
        assert_eq!(
            out["properties"]["opts"]["items"]["properties"]["k"]["type"],
            json!(["integer", "null"])
        );
    }
}
