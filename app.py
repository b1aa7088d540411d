"""Conversation rooms: the web app's entry point (`streamlit run app.py`)."""

import streamlit as st

st.set_page_config(page_title="Conversation rooms", page_icon="💬", layout="wide")
st.title("Conversation rooms")
st.write(
    "A lab for conversations between EDSL agents, with people in the loop. "
    "The engine is available as the `conversation` library; the web screens are being built."
)
