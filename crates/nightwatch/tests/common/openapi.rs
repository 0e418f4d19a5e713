//! Checks a live reply against the daemon's own OpenAPI document: its status must be documented
//! for the route, its content type must be the documented one, and a JSON body must validate
//! against the documented schema (JSON Schema 2020-12, as OpenAPI 3.1 uses it).
//!
//! Object schemas that list their properties are closed here (`additionalProperties: false`
//! where the document leaves it open), so a field the daemon sends but the document does not
//! name fails the check too: drift is caught in both directions.

use serde_json::{Value, json};

use super::daemon::Reply;

pub struct Contract {
    doc: Value,
}

impl Contract {
    pub fn of(doc: Value) -> Contract {
        let mut doc = doc;
        close_objects(&mut doc["components"]);
        close_objects(&mut doc["paths"]);
        Contract { doc }
    }

    /// Every documented (path, method).
    pub fn operations(&self) -> Vec<(String, String)> {
        let mut all = Vec::new();
        for (path, item) in self.doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("a path item").keys() {
                if ["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                    all.push((path.clone(), method.clone()));
                }
            }
        }
        all
    }

    /// Panics, saying why, unless `reply` is what the document promises for `method path`
    /// (`path` as documented, with `{id}` and the like).
    pub fn check(&self, method: &str, path: &str, reply: &Reply) {
        let operation = &self.doc["paths"][path][method];
        assert!(
            operation.is_object(),
            "{method} {path} is not in the document"
        );
        let status = reply.status.to_string();
        let response = &operation["responses"][status.as_str()];
        assert!(
            response.is_object(),
            "{method} {path} answered {status}, which the document does not list ({:?}): {}",
            operation["responses"]
                .as_object()
                .map(|r| r.keys().collect::<Vec<_>>()),
            reply.text()
        );
        let Some(content) = response["content"].as_object() else {
            return;
        };
        let sent = reply
            .header("content-type")
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        let Some(documented) = content.get(&sent) else {
            panic!(
                "{method} {path} {status}: sent {sent:?}, documented {:?}",
                content.keys().collect::<Vec<_>>()
            );
        };
        if sent != "application/json" {
            return;
        }
        let body: Value = reply.json();
        let schema = &documented["schema"];
        assert!(schema.is_object(), "{method} {path} {status}: no schema");
        // The schema with the document's components beside it, so `#/components/...`
        // references resolve as they do in the document.
        let mut root = schema.clone();
        root["components"] = self.doc["components"].clone();
        root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        let validator = jsonschema::draft202012::new(&root)
            .unwrap_or_else(|e| panic!("{method} {path} {status}: not a valid schema: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(&body)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {path} {status}: the reply does not match the document:\n{}\n{body:#}",
            errors.join("\n")
        );
    }
}

/// Closes every object schema that lists properties and says nothing of others.
fn close_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("properties").is_some_and(Value::is_object)
                && !map.contains_key("additionalProperties")
            {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}
