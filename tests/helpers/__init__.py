"""Support code shared by several test modules (no tests here): fake servers, reference
implementations, helper engines and small builders."""
