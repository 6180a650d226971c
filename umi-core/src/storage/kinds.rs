//! The kinds a stored record names: what an entity is, and how an evolution link relates
//! two facts. They are the storage's vocabulary (columns hold their names), so they live
//! here, below the memory whose prompt tasks ask the model for them.

use serde::{Deserialize, Serialize};

/// The kind of thing an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    /// A person.
    Person,
    /// A company, team or institution.
    Organization,
    /// A project or product.
    Project,
    /// A subject or concept.
    Topic,
    /// A location.
    Place,
    /// Something that happened or will.
    Event,
    /// Raw text kept as it is (also what extraction failures store).
    Note,
}

impl EntityType {
    /// Every type, in declaration order.
    pub const ALL: [EntityType; 7] = [
        Self::Person,
        Self::Organization,
        Self::Project,
        Self::Topic,
        Self::Place,
        Self::Event,
        Self::Note,
    ];

    /// The type's name (`organization`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Organization => "organization",
            Self::Project => "project",
            Self::Topic => "topic",
            Self::Place => "place",
            Self::Event => "event",
            Self::Note => "note",
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// How a new fact relates to something already remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvolutionType {
    /// The new fact replaces the old one.
    Update,
    /// The new fact adds to the old one.
    Extend,
    /// The new fact follows from the old one.
    Derive,
    /// The new fact contradicts the old one.
    Contradict,
    /// No relation.
    None,
}

impl EvolutionType {
    /// Every type.
    pub const ALL: [EvolutionType; 5] = [
        Self::Update,
        Self::Extend,
        Self::Derive,
        Self::Contradict,
        Self::None,
    ];

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The type's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Update => "update",
            Self::Extend => "extend",
            Self::Derive => "derive",
            Self::Contradict => "contradict",
            Self::None => "none",
        }
    }
}
